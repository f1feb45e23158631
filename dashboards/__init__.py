"""The offline report site: static HTML pages with Plotly charts, built from the warehouse.

Nothing is imported here: a module that needs one page's path (an alert's link) must not pay
for the whole site (``dashboards.site``), nor a sync for Plotly.
"""
