"""The offline report site: static HTML pages with Plotly charts, built from the warehouse."""

from dashboards.read import ReportError
from dashboards.site import SiteResult, build_site

__all__ = ["ReportError", "SiteResult", "build_site"]
