"""Workload formats: SWF and LWF readers, conversion between them."""
