"""The site a run's ``[simulation] resources`` describes: nodes given in the option, the
``<site>`` of the LWF trace (``in-tracefile``, as in Haizea) or a site file (``file:PATH``, an
XML document whose root is an LWF ``<site>``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lease_manager.errors import TraceError
from lease_manager.kernel.resources import NodeSet, parse_site

if TYPE_CHECKING:
    from lease_manager.config.schema import Config

IN_TRACEFILE = "in-tracefile"
FILE_PREFIX = "file:"


def is_site_reference(text: str) -> bool:
    """Does ``resources`` name a site elsewhere (the trace's, or a file's)?"""
    word = text.strip()
    return word == IN_TRACEFILE or word.startswith(FILE_PREFIX)


def site_nodes(config: Config) -> NodeSet:
    """The nodes of the run's site (a :class:`~lease_manager.errors.ConfigError` or
    :class:`~lease_manager.errors.TraceError` naming the file when they cannot be read)."""
    text = config.get("simulation", "resources").strip()
    # the LWF reader loads only for a site it describes (an attrs class: ~1 ms to make)
    if text == IN_TRACEFILE:
        from lease_manager.workload.lwf import is_lwf, read_lwf

        trace = config.get("tracefile", "tracefile")
        if not trace:
            raise config.error("simulation", "resources", "in-tracefile needs a trace file "
                                                          "([tracefile] tracefile)")
        if not Path(trace).is_file() or not is_lwf(trace):
            raise config.error("simulation", "resources", f"in-tracefile needs an LWF trace "
                                                          f"that describes its <site>: {trace}")
        site = read_lwf(trace, None).site
        assert site is not None   # read_lwf without types refuses a workload without a site
        return site
    if text.startswith(FILE_PREFIX):
        name = text[len(FILE_PREFIX):].strip()
        base = config.path.resolve().parent if config.path is not None else Path.cwd()
        path = base / name
        from lxml import etree  # here: a run whose nodes are given in the option never loads it

        from lease_manager.workload.lwf import _site

        try:
            root = etree.parse(str(path), etree.XMLParser(resolve_entities=False,
                                                          no_network=True)).getroot()
        except OSError:
            raise config.error("simulation", "resources", f"site file not found: {path}") \
                from None
        except etree.XMLSyntaxError as exc:
            raise TraceError(f"malformed XML: {exc.msg}", file=str(path),
                             line=exc.lineno or None, field="XML") from None
        if root.tag != "site" or root.find("resource-types") is None:
            raise TraceError("a site file's root is a <site> with <resource-types> and "
                             "<nodes>", file=str(path), line=root.sourceline, field="<site>")
        return _site(root, str(path))
    return parse_site(text)
