"""The choices of ``report --plots``' figure options, importable without matplotlib or numpy
(the command line lists them)."""

#: what a Gantt chart's colours say (``auto``: ``type`` with several types, else ``wait``)
COLOUR_BY = ("auto", "wait", "size", "type")
#: how figures over time (power, utilisation, queue, series) show several profiles: one panel
#: each, or daily means (with the day's range for power) on one axis
TIME_PLOTS = ("panels", "daily")
