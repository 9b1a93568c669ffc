"""REST endpoints for runtime jobs."""
from django.urls import path

urlpatterns = [
]
