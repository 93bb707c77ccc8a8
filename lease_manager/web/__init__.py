"""What the browser sees: the daemon's dashboard and the HTML report of a run.

Both draw their charts with Plotly, whose JavaScript ships inside the ``plotly`` package from
PyPI, so that every page works with no network.
"""
