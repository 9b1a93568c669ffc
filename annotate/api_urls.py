"""REST endpoints of interfaces.md for studies, batches, assignments, judgments, reports."""
from django.urls import path

urlpatterns = [
]
