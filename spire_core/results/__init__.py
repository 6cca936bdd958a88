"""What results carry: the metadata schema, per-page views for prompts, highlighting."""
