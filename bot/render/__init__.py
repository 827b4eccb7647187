"""The render stage: drift, coverage, stats, history timelines and ``explain`` turned into text,
Markdown, JSON or CSV. Each output builds a small typed view first; Markdown (and the drift and coverage
text) goes through the Jinja2 templates in ``templates/`` (`opdrift.render.jinja`, imported only when a
template is rendered), JSON is built from the same view or records without Jinja2. The drift report's
entry point is `opdrift.render.report.render`; the publisher's markers are in `opdrift.render.markers`.
Render imports stages below it (drift, history, coverage, taxonomy) and nothing from publish or cli.
"""
