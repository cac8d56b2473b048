"""`aesgen test`: run the generator's pytest suite and the GoogleTest harness, count both."""
