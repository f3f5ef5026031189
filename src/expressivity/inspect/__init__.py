"""Looking at a saved network: run it on typed input (:mod:`~expressivity.inspect.run`) and draw
one self-contained HTML page of it (:mod:`~expressivity.inspect.page`)."""
