"""Page reading: bytes -> Document (decoding, HTML and Markdown, sentence segmentation)."""
