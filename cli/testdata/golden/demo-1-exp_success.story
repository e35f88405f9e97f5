# 1. success after a few polls: succeeded, result {"result.url":"https://results.example.com/exp_success.csv"} (exit code 0); the provider saw 4 status requests
2030-01-02 10:20:00 UTC submitted job exp_success, deadline 10:21:00, budget 8 (max transport failures 3, max rate-limited answers 3)
10:20:00 status request 1 of 8: state queued, next poll 10:20:00 from local backoff
10:20:00 status request 2 of 8: state queued → running, next poll 10:20:00 from local backoff
10:20:00 status request 3 of 8: state running, next poll 10:20:02 from local backoff
10:20:02 status request 4 of 8: state running → succeeded
10:20:02 succeeded after 4 of 8 status requests, 2s elapsed
