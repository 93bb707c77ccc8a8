"""Experiments: sweeps of runs, their result table, reports and plots."""
