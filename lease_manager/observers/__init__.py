"""The core's run observers: accounting, recorded series and the invariant checker."""
