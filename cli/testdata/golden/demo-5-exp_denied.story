# 5. authorization denied: escalated authorization_denied (exit code 24); the provider saw 1 status requests
2030-01-02 10:20:05 UTC submitted job exp_denied, deadline 10:21:05, budget 8 (max transport failures 3, max rate-limited answers 3)
10:20:05 status request 1 of 8: received 401
10:20:05 escalated authorization_denied: the provider answered 401; the credential is not retried; 1 of 8 status requests used; options: inspect_console, abandon
