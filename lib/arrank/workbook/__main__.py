"""``python -m arrank.workbook``: run the whole workbook (see :mod:`arrank.workbook.whole`)."""

from arrank.workbook.whole import main

raise SystemExit(main())
