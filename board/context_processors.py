from django.conf import settings


def site(request):
    return {"AEON_DEMO": settings.AEON_DEMO}
