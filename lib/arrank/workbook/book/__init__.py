"""The reading-group book: the executed workbook as a static website (``make book``; docs/book.md).
``build`` assembles it, ``executed`` readies an executed notebook, ``pages`` writes the generated
pages; ``site/`` holds the hand-written pages and the Sphinx configuration.
"""
