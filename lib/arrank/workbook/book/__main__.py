"""``python -m arrank.workbook.book``: build the reading-group book (``make book``)."""

from arrank.workbook.book.build import main

raise SystemExit(main())
