# Quick start:  make demo   (build the flashattn report from the committed logs)
#               make test   (set up and run the CPU test suite)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
ASSIGNMENT ?= flashattn
# torch for the tests: its CPU build, never the multi-GB CUDA build that plain PyPI gives Linux x86_64.
# Two ways, the first that works:
#  1. `pip install --no-index torch==$(TORCH_VERSION)`: a wheel of that version that pip finds without an
#     index, in a find-links folder of pip's configuration. This workplace's machines, CI's included, keep
#     torch-2.13.0+cpu in /opt/wheels (find-links in PIP_FIND_LINKS and ~/.config/pip/pip.conf: see
#     `pip config list`) and reach PyPI but no other index. With --no-index pip opens no connection: the
#     wheel is installed in seconds, or pip fails at once where there is none.
#  2. PyTorch's CPU index (TORCH_INDEX), where a plain machine finds the CPU wheel.
# Both take torch alone (--no-deps); its own needs (filelock, sympy, networkx, ...) come with '.[test]'
# from the usual index, since pip resolves an installed torch's requirements too.
TORCH_VERSION ?= 2.13.0
TORCH_INDEX   ?= https://download.pytorch.org/whl/cpu

# wheelhouse: wheels for an offline GPU node (Python 3.12, x86_64) holding what the
# harness needs beyond torch/triton/cupy: pydantic, typer, rich, nvidia-ml-py, pyelftools and their needs.
WHEEL_PY   ?= 3.12
WHEELHOUSE ?= .whl
WHEELS = pydantic==2.14.3 pydantic-core==2.50.4 annotated-types==0.7.0 typing-extensions==4.16.0 \
         typing-inspection==0.4.5 typer==0.29.2 annotated-doc==0.0.7 click==8.4.0 rich==15.0.0 markdown-it-py==4.3.0 \
         mdurl==0.1.2 pygments==2.19.2 shellingham==1.5.4 nvidia-ml-py==13.615.71 pyelftools==0.33

TEST_WHEELS = pytest==9.2.0 pluggy==1.6.0 iniconfig==2.3.0 packaging==25.0

.PHONY: demo test test-sweeps fuzz install gpu-test wheelhouse clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	@# set-up work done once here, not in the first build: the package's bytecode, matplotlib's font cache
	$(BIN)/python -m compileall -q reporter kernels tests
	$(BIN)/python -c "import matplotlib.pyplot" >/dev/null 2>&1 || true
	@touch $@

# tests also need torch: the CPU build first (see TORCH_VERSION), so '.[test]' finds it satisfied
$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/pip install -q --no-index --no-deps torch==$(TORCH_VERSION) 2>/dev/null \
	  || { echo "torch $(TORCH_VERSION): no local wheel; the CPU build from $(TORCH_INDEX)"; \
	       $(BIN)/pip install -q --no-deps --index-url $(TORCH_INDEX) torch==$(TORCH_VERSION); }
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/report build $(ASSIGNMENT)
	@echo "PDF: $(CURDIR)/reports/$(ASSIGNMENT)/worklog.pdf"

# the suite on every core (pytest-xdist), then alone the few tests whose check is a wall time (marker `timed`),
# which a test on the other core would slow down; plain `pytest` runs everything in one process.
# --dist worksteal: a worker that runs out of tests takes half of what the other has left (xdist's default
# hands out tests in chunks, and the one that drew the long tests of the end ran on for 20 s alone).
# One worker more than the cores: a worker waiting for another's shared build (a report, a compile) or for
# a child process leaves its core to the extra one.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal -m "not gpu and not timed and not sweep_points"
	$(BIN)/python -m pytest -m timed

# every point of the recorded sweeps built whole (ptxas included) and checked for spills, beyond the CONFIG that
# each version runs (which `make test` builds): a sweep is history, its points are rebuilt when a header changes
test-sweeps: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal -m "sweep_points"

# on a GPU machine with the package installed: every version checked on the small cases
# the property-based tests at 5,000 examples per target (CI runs them at 60-150): minutes, not seconds
fuzz: $(VENV)/.installed-test
	FUZZ_EXAMPLES=5000 $(BIN)/python -m pytest -q tests/test_fuzz.py

gpu-test:
	$(PYTHON) -m pytest -m gpu -q

wheelhouse:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version $(WHEEL_PY) \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
	  --platform any -d $(WHEELHOUSE) $(WHEELS) $(TEST_WHEELS)
	@echo "wheels in $(WHEELHOUSE)/; on the GPU node: pip install --no-index --no-deps --target /tmp/site $(WHEELHOUSE)/*.whl"

clean:
	rm -rf $(VENV) reports build *.egg-info
