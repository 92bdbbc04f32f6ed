"""Edit, then approve: the "Edit…" button's flow (``flow``), its modal (``form``), which
fields it offers (``fields``), each field's value read back (``values``), opened in time
(``opening``)."""
