from django import template

from anchor import selectors

register = template.Library()


@register.simple_tag
def moderation_log(benchmark_public_id: str):
    """The moderators' actions on a benchmark, newest first (docs/trust-anchor.md §Moderation)."""
    return selectors.moderation_log(benchmark_public_id)


@register.simple_tag
def signed_manifests(benchmark_public_id: str):
    """The latest signed manifest of each public run (docs/trust-anchor.md §Run manifests)."""
    return selectors.benchmark_manifests(benchmark_public_id)
