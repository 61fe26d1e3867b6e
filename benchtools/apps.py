from django.apps import AppConfig


class BenchtoolsConfig(AppConfig):
    name = "benchtools"
    verbose_name = "Benchmark commands (development only)"
