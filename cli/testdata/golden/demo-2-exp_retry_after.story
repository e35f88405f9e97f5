# 2. Retry-After honoured: succeeded, result {"result.url":"https://results.example.com/exp_retry_after.csv"} (exit code 0); the provider saw 3 status requests
2030-01-02 10:20:02 UTC submitted job exp_retry_after, deadline 10:21:02, budget 8 (max transport failures 3, max rate-limited answers 3)
10:20:02 status request 1 of 8: received 503, Retry-After 2, transport failure 1, next poll 10:20:04 from provider guidance
10:20:04 status request 2 of 8: state running, next poll 10:20:04 from local backoff
10:20:04 status request 3 of 8: state running → succeeded
10:20:04 succeeded after 3 of 8 status requests, 3s elapsed
