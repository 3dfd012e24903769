"""Builds ktune._torch_ext, the C++ fast path of ktune.gemm and the row ops on PyTorch tensors
(python/torch_ext.cpp), against the PyTorch installed beside ktune:

    python -m ktune.build_torch_ext            # into the package, else the per-user cache
    python -m ktune.build_torch_ext --out DIR  # somewhere else (ktune then looks only in the two above)
    python -m ktune.build_torch_ext --print    # the compiler command, not run

`pip install .` builds ktune in a fresh environment without PyTorch, so the module is left out
there; this builds it afterwards, with a C++17 compiler (g++, or $CXX) and the CUDA toolkit's
headers (CUDA_HOME, as PyTorch finds them), in about 20 s. The module loads only beside the PyTorch
version it was built against: rebuild after upgrading PyTorch. Exit status 2 when it cannot be
built here (no PyTorch, a PyTorch without CUDA, no compiler, no sources), 1 when the compiler fails.
"""
import argparse
import os
import shlex
import subprocess
import sys
import sysconfig


def _fail(msg):
    print("ktune.build_torch_ext: " + msg, file=sys.stderr)
    return 2


def sources():
    """(torch_ext.cpp, the folder holding call_api.h): installed beside the package (ktune/csrc) or,
    in a source tree, in python/ next to python/ktune/."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(here, "csrc"), os.path.dirname(here)):
        src = os.path.join(d, "torch_ext.cpp")
        if os.path.isfile(src) and os.path.isfile(os.path.join(d, "call_api.h")):
            return src, d
    return None, None


def cache_dir(torch_version):
    """Where the module goes when the package folder is not writable; ktune looks here too."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ktune", "torch_ext", torch_version)


def default_out(torch_version):
    from . import _ktune

    pkg = os.path.dirname(os.path.abspath(_ktune.__file__))
    return pkg if os.access(pkg, os.W_OK) else cache_dir(torch_version)


def command(torch, cpp_extension, out_dir, src, src_dir, cxx):
    """The compiler command: PyTorch's headers (and CUDA's, for its stream API) as system headers,
    its ABI and version, linked against its libraries with an rpath to them (torch.utils.cpp_extension
    says where they are)."""
    e = cpp_extension
    libdir = e.library_paths()[0]
    cmd = [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden"]
    try:
        includes = e.include_paths(device_type="cuda")
    except TypeError:  # PyTorch before 2.6 spelled it include_paths(cuda=True)
        includes = e.include_paths(cuda=True)
    for inc in includes + [sysconfig.get_paths()["include"]]:
        cmd += ["-isystem", inc]
    cmd += ["-I" + src_dir, "-DTORCH_EXTENSION_NAME=_torch_ext", "-DTORCH_API_INCLUDE_EXTENSION_H",
            "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI),
            '-DKTUNE_TORCH_VERSION="%s"' % torch.__version__, src,
            "-L" + libdir, "-Wl,-rpath," + libdir, "-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-ltorch_python",
            "-o", os.path.join(out_dir, "_torch_ext" + sysconfig.get_config_var("EXT_SUFFIX"))]
    return cmd


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ktune.build_torch_ext", description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the module (default: the package's, else the per-user cache)")
    ap.add_argument("--print", dest="print_only", action="store_true", help="print the compiler command, do not run it")
    args = ap.parse_args(argv)
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as exc:
        return _fail("PyTorch is not importable here (%s): nothing to build against" % exc)
    if not torch.version.cuda:  # the module links PyTorch's CUDA libraries (c10_cuda, torch_cuda)
        return _fail("PyTorch %s is built without CUDA: install a CUDA build of PyTorch to build against"
                     % torch.__version__)
    src, src_dir = sources()
    if src is None:
        return _fail("torch_ext.cpp and call_api.h are not beside the package (ktune/csrc) nor in python/: "
                     "reinstall ktune from its repository")
    out = os.path.abspath(args.out) if args.out else default_out(torch.__version__)
    cxx = os.environ.get("CXX", "g++")
    try:
        cmd = command(torch, cpp_extension, out, src, src_dir, cxx)
    except OSError as exc:  # no CUDA toolkit where PyTorch looks for one (CUDA_HOME)
        return _fail("PyTorch finds no CUDA toolkit headers (%s); set CUDA_HOME" % exc)
    if args.print_only:
        print(shlex.join(cmd))
        return 0
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        return _fail("cannot make the folder %s: %s" % (out, exc))
    if not os.access(out, os.W_OK):
        return _fail("the folder %s is not writable" % out)
    print("building ktune._torch_ext against PyTorch %s into %s ..." % (torch.__version__, out), flush=True)
    try:
        done = subprocess.run(cmd)
    except OSError as exc:
        return _fail("cannot run the compiler %r (%s); set CXX to a C++17 compiler" % (cxx, exc))
    if done.returncode != 0:
        print("ktune.build_torch_ext: the compiler failed (exit %d): %s" % (done.returncode, shlex.join(cmd)),
              file=sys.stderr)
        return 1
    print("built %s" % cmd[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
