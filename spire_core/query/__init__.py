"""The query side: search rounds, aggregation, table views, local context, evidence filtering."""
