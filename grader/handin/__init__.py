"""Reading a hand-in: a notebook or a .py file into the code that runs (caps, cells, places); text only, never torch."""
