"""The embedded demo, development tooling outside the product: the catalogue of demo models and
suites (data files in `data/`), the bundle generator, a pod client of protocol v1 and the loader
that submits the demo pods' signed bundles over HTTP (`make run`, `manage.py load_demo`).

A Django app only in development (`AEON_ENV=development` adds it to INSTALLED_APPS, for its
`load_demo` command); the production image leaves it out (deploy/Dockerfile.dockerignore). The
product never imports it."""
