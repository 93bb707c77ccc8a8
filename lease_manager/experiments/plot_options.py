"""The choices of ``report --plots``' figure options, importable without matplotlib or numpy
(the command line lists them)."""

#: what a Gantt chart's colours say (``auto``: ``type`` with several types, else ``wait``)
COLOUR_BY = ("auto", "wait", "size", "type")
#: how a power figure shows its profiles: one panel each, or daily means with their range
POWER_PLOTS = ("panels", "daily")
