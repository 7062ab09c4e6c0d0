"""``python -m reporter.cuda [--arch sm_90a] [-DNAME=VALUE ...] FILE.cu ...``: each kernel's ptxas report."""

from __future__ import annotations

from .ptxas import main

raise SystemExit(main())
