"""What every test folder shares: waiting for a condition with a deadline (:mod:`.polling`)."""
