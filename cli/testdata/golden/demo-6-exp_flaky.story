# 6. provider failure: escalated provider_failure (exit code 25); the provider saw 3 status requests
2030-01-02 10:20:05 UTC submitted job exp_flaky, deadline 10:21:05, budget 8 (max transport failures 3, max rate-limited answers 3)
10:20:05 status request 1 of 8: received 502, transport failure 1, next poll 10:20:06 from local backoff
10:20:06 status request 2 of 8: received 502, transport failure 2, next poll 10:20:06 from local backoff
10:20:06 status request 3 of 8: received 502, transport failure 3
10:20:06 escalated provider_failure: 3 of 3 transport failures (last: http_502); 3 of 8 status requests used; options: extend, inspect_console, abandon
