# 4. request budget exhausted: escalated request_budget_exhausted (exit code 21); the provider saw 3 status requests
2030-01-02 10:20:05 UTC submitted job exp_slow, deadline 10:21:05, budget 3 (max transport failures 3, max rate-limited answers 3)
10:20:05 status request 1 of 3: state running, next poll 10:20:05 from local backoff
10:20:05 status request 2 of 3: state running, next poll 10:20:05 from local backoff
10:20:05 status request 3 of 3: state running
10:20:05 escalated request_budget_exhausted: every allowed status request was used: 3 of 3; 3 of 3 status requests used; options: extend, inspect_console, abandon
