# Test images made by a real tool (Pillow, Debian's python3-pil) for
# spec/document_spec.lua: `images.py DIR` writes one file per format and
# size, and prints a JSON list of {file, format, width, height} as Pillow
# reads each back. `images.py bomb FILE N` writes an N x N 8-bit grey PNG
# (valid, all zero) by streaming zlib, never holding the pixels.
# `images.py notebook FILE PNG [BOMB]` writes a Jupyter notebook with
# nbformat (Debian's python3-nbformat, validated against its schema): a
# markdown cell, a stream and a result, PNG's image, an error, HTML only
# (and, with BOMB, that PNG as a second image output).
# `images.py big DIR` writes images over read_file's 1568-pixel side.
import base64, json, os, struct, sys, zlib

def notebook(path, png, bomb=None):
    import nbformat
    from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_output
    b64 = lambda p: base64.b64encode(open(p, "rb").read()).decode()
    cells = [
        new_markdown_cell("# Title\nSome *text*."),
        new_code_cell("print('hi')\n1+1", execution_count=1, outputs=[
            new_output("stream", name="stdout", text="hi\n"),
            new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]),
        new_code_cell("plot()", execution_count=2, outputs=[
            new_output("display_data", data={"image/png": b64(png), "text/plain": "<Figure>"})]),
        new_code_cell("1/0", execution_count=3, outputs=[
            new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                       traceback=["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"])]),
        new_code_cell("show()", outputs=[new_output("display_data", data={"text/html": "<b>x</b>"})]),
    ]
    if bomb:
        cells.append(new_code_cell("big()", outputs=[new_output("display_data", data={"image/png": b64(bomb)})]))
    nb = new_notebook(cells=cells)
    nbformat.validate(nb)
    nbformat.write(nb, path)

def bomb(path, n):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    z, row, parts = zlib.compressobj(9), b"\0" * (n + 1), []
    for _ in range(n):
        parts.append(z.compress(row))
    parts.append(z.flush())
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", n, n, 8, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b""))

def made(out):
    from PIL import Image
    cases = []
    for fmt, ext, opts in [("PNG", "png", {}), ("JPEG", "jpg", {}), ("JPEG", "progressive.jpg", {"progressive": True}),
                           ("GIF", "gif", {}), ("WEBP", "webp", {"quality": 80}), ("WEBP", "lossless.webp", {"lossless": True})]:
        for w, h in [(1, 1), (3, 2), (640, 480), (1000, 17)]:
            im = Image.new("RGB", (w, h))
            for x in range(min(w, 50)):
                im.putpixel((x, 0), (x * 5 % 256, 80, 160))
            name = os.path.join(out, "%dx%d.%s" % (w, h, ext))
            im.save(name, fmt, **opts)
            back = Image.open(name)
            cases.append({"file": os.path.basename(name), "format": fmt, "width": back.size[0], "height": back.size[1]})
    # an RGBA PNG with an alpha channel and a WebP with alpha (VP8X)
    Image.new("RGBA", (33, 44), (1, 2, 3, 128)).save(os.path.join(out, "alpha.png"))
    Image.new("RGBA", (33, 44), (1, 2, 3, 128)).save(os.path.join(out, "alpha.webp"), "WEBP", quality=80)
    cases.append({"file": "alpha.png", "format": "PNG", "width": 33, "height": 44})
    cases.append({"file": "alpha.webp", "format": "WEBP", "width": 33, "height": 44})
    print(json.dumps(cases))

def big(out):
    """Images over read_file's 1568-pixel side, one per format."""
    from PIL import Image
    Image.new("RGB", (4000, 3000), (200, 10, 10)).save(f"{out}/big.png")
    Image.new("RGB", (4000, 3000), (10, 200, 10)).save(f"{out}/big.jpg", quality=90)
    Image.new("RGB", (3000, 4000), (10, 10, 200)).save(f"{out}/big.webp")
    Image.new("P", (2000, 100)).save(f"{out}/big.gif")


if sys.argv[1] == "bomb":
    bomb(sys.argv[2], int(sys.argv[3]))
elif sys.argv[1] == "big":
    big(sys.argv[2])
elif sys.argv[1] == "notebook":
    notebook(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
else:
    made(sys.argv[1])
