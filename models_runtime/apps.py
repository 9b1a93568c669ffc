from django.apps import AppConfig


class ModelsRuntimeConfig(AppConfig):
    default_auto_field = 'django.db.models.BigAutoField'
    name = 'models_runtime'
