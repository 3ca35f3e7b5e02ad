"""tools/install_size.py reads a wheel's sizes from its zip directory with range requests, never the whole file."""
import http.server
import io
import sys
import threading
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import install_size  # noqa: E402


def make_wheel(path, files):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return path


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves one file, honouring `Range: bytes=a-b` (or not, when `ignore_range` is set), counting bytes sent."""
    body = b""
    ignore_range = False
    sent = 0

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()

    def do_GET(self):
        spec = self.headers.get("Range")
        if spec and not self.ignore_range:
            start, end = (int(x) for x in spec.removeprefix("bytes=").split("-"))
            chunk = self.body[start:end + 1]
            self.send_response(206)
        else:
            chunk = self.body
            self.send_response(200)
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        self.wfile.write(chunk)
        type(self).sent += len(chunk)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_remote_wheel_sizes_come_from_small_range_requests(tmp_path, server):
    payload = bytes(range(256)) * 4000  # 1,024,000 bytes, barely compressible
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/a.bin": payload, "demo/b.txt": "x" * 5000})
    RangeHandler.body, RangeHandler.ignore_range, RangeHandler.sent = wheel.read_bytes(), False, 0
    url = f"http://127.0.0.1:{server.server_port}/demo-1.0-py3-none-any.whl"
    download, unpacked = install_size.wheel_sizes(url, install_size.ssl_context())
    assert download == wheel.stat().st_size
    assert unpacked == len(payload) + 5000
    assert RangeHandler.sent < download // 10  # only the zip directory crossed the wire
    local = install_size.wheel_sizes(wheel.as_uri(), install_size.ssl_context())
    assert local == (download, unpacked)


def test_a_server_that_ignores_ranges_is_refused_with_a_fix(tmp_path, server):
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/a.txt": "hello"})
    RangeHandler.body, RangeHandler.ignore_range = wheel.read_bytes(), True
    url = f"http://127.0.0.1:{server.server_port}/demo-1.0-py3-none-any.whl"
    with pytest.raises(RuntimeError, match="ignored the range request.*Fix:"):
        install_size.wheel_sizes(url, install_size.ssl_context())


def test_unpacked_size_adds_up_every_file():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("a", b"1" * 10)
        wheel.writestr("b/c", b"2" * 32)
    assert install_size.unpacked_size(io.BytesIO(buffer.getvalue())) == 42


def test_markdown_table_lists_each_install_with_its_largest_wheels():
    rows = [{"name": "mindspore", "download": 804_271_994}, {"name": "playwright", "download": 45_000_000},
            {"name": "scipy", "download": 35_900_000}, {"name": "six", "download": 11_000}]
    text = install_size.markdown({"default": {"packages": 4, "download": 885_182_994, "unpacked": 3_196_000_000,
                                              "rows": rows}})
    assert text.splitlines()[2] == ("| default | 4 | 885 MB | 3,196 MB | mindspore 804 MB, playwright 45 MB, "
                                    "scipy 36 MB |")
