# 1. success after a few polls: succeeded, result {"result.url":"https://results.example.com/exp_success.csv"} (exit code 0); the provider saw 4 status requests
10:20:00 submitted job exp_success, deadline 10:21:00, budget 8 (max transport failures 3, max rate-limited answers 3)
10:20:00 status request 1 of 8 sent, deadline 10:21:00
10:20:00 polled, state queued, next poll 10:20:00 from local backoff
10:20:00 state is now queued
10:20:00 status request 2 of 8 sent, deadline 10:21:00
10:20:00 polled, state running, next poll 10:20:00 from local backoff
10:20:00 state changed queued → running
10:20:00 status request 3 of 8 sent, deadline 10:21:00
10:20:00 polled, state running, next poll 10:20:02 from local backoff
10:20:02 status request 4 of 8 sent, deadline 10:21:00
10:20:02 polled, state succeeded, succeeded: success with a valid result
10:20:02 state changed running → succeeded
10:20:02 succeeded after 4 of 8 status requests, 2s elapsed
