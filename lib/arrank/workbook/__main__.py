"""``python -m arrank.workbook``: run the whole workbook (see :mod:`arrank.workbook.whole`)."""

import sys

from arrank.workbook.whole import main

sys.exit(main())
