"""The records every check and measurement produces (``schema``) and their durable writer; below
both ``scenarios`` (which writes them) and ``results`` (which reports them)."""
