"""A small async CRM agent: the team's production code that the chaos suite tests."""
