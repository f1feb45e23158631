"""Speed and memory measurements, side by side in one run (never assertions in the test suite)."""
