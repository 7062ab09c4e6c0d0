# Quick start:  make demo   (build the flashattn report from the committed logs)
#               make test   (set up and run the CPU test suite)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
ASSIGNMENT ?= flashattn
# CPU build of torch from the package index; never the multi-GB CUDA build on a CPU box
TORCH_CPU ?= torch==2.13.0

# wheelhouse: wheels for an offline GPU node (Python 3.12, x86_64) holding what the
# harness needs beyond torch/triton/cupy: pydantic, typer, rich, nvidia-ml-py and their needs.
WHEEL_PY   ?= 3.12
WHEELHOUSE ?= .whl
WHEELS = pydantic==2.14.3 pydantic-core==2.50.4 annotated-types==0.7.0 typing-extensions==4.16.0 \
         typing-inspection==0.4.5 typer==0.29.2 annotated-doc==0.0.7 click==8.4.0 rich==15.0.0 markdown-it-py==4.3.0 \
         mdurl==0.1.2 pygments==2.19.2 shellingham==1.5.4 nvidia-ml-py==13.615.71

TEST_WHEELS = pytest==9.2.0 pluggy==1.6.0 iniconfig==2.3.0 packaging==25.0

.PHONY: demo test install gpu-test wheelhouse clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	@# set-up work done once here, not in the first build: the package's bytecode, matplotlib's font cache
	$(BIN)/python -m compileall -q reporter
	$(BIN)/python -c "import matplotlib.pyplot" >/dev/null 2>&1 || true
	@touch $@

# tests also need torch: the CPU build first, so '.[test]' finds it satisfied
$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/pip install -q $(TORCH_CPU)
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

install: $(VENV)/.installed

demo: install
	$(BIN)/report build $(ASSIGNMENT)
	@echo "PDF: $(CURDIR)/reports/$(ASSIGNMENT)/worklog.pdf"

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

# on a GPU machine with the package installed: every version checked on the small cases
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
