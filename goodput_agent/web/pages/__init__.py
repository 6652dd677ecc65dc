"""The review pages: one module per page (or family of pages), each giving its routes to
web/app.py's PAGES; what they share is web/site.py."""
