# 3. unknown state stops: escalated unknown_state (exit code 23); the provider saw 2 status requests
2030-01-02 10:20:04 UTC submitted job exp_paused, deadline 10:21:04, budget 8 (max transport failures 3, max rate-limited answers 3)
10:20:04 status request 1 of 8: state running, next poll 10:20:05 from local backoff
10:20:05 status request 2 of 8: state running → paused
10:20:05 escalated unknown_state: state "paused" is not in the contract's state table; 2 of 8 status requests used; options: extend, inspect_console, abandon
