"""The ingestion benchmark's contenders and the simulated company they all read.

Each contender runs as its own child process: their memory stays apart (peak RSS is per
contender) and dlt stays out of creditlens's environment, under its own virtualenv's interpreter.
"""
