# flux-wave-bot container action. Build with a mirror or an air-gapped base image:
#   docker build --build-arg BASE_IMAGE=registry.example/python:3.12-slim .
# Any Debian-like image with python3 (>= 3.11), venv and pip (>= 22.3) works; pip installs with the
# base image's own configuration (/etc/pip.conf, PIP_INDEX_URL), so a base set up for a package
# index mirror builds without reaching PyPI.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

# git for the work tree (slim bases lack it); no recommends keeps the layer small.
RUN if ! command -v git >/dev/null; then \
      apt-get update \
      && apt-get install -y --no-install-recommends git ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi

# Dependencies first, in their own layer, read from pyproject.toml (the one list of them): a code
# change does not reinstall them.
# The venv has no pip of its own (25 MB of pip and setuptools nothing runs): the base image's pip
# installs into it (`--python`, pip >= 22.3).
COPY pyproject.toml /opt/wave-bot/src/
RUN python3 -m venv --without-pip /opt/wave-bot/venv \
    && python3 -c "import tomllib; print('\\n'.join(tomllib.load(open('/opt/wave-bot/src/pyproject.toml', 'rb'))['project']['dependencies']))" \
       > /opt/wave-bot/requirements.txt \
    && python3 -m pip --python /opt/wave-bot/venv/bin/python install --no-cache-dir --disable-pip-version-check \
       --root-user-action=ignore -r /opt/wave-bot/requirements.txt

COPY README.md /opt/wave-bot/src/
COPY bot /opt/wave-bot/src/bot
RUN python3 -m pip --python /opt/wave-bot/venv/bin/python install --no-cache-dir --disable-pip-version-check \
       --root-user-action=ignore --no-deps /opt/wave-bot/src \
    && rm -rf /opt/wave-bot/src

ENV PATH=/opt/wave-bot/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# GitHub container actions run as root, in the workspace they mount; no WORKDIR on purpose.
ENTRYPOINT ["wave-bot", "run"]
