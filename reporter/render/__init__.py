"""Records and analysis turned into what people read: text, HTML, PDF, charts, exports."""

from pathlib import Path

#: The project root's report_templates/ (jinja templates, the report's CSS, the scaffold's files).
TEMPLATES = Path(__file__).resolve().parents[2] / "report_templates"
