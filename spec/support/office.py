#!/usr/bin/python3
"""Documents made by real writers for spec/office_spec.lua, into DIR:
python-docx (report.docx), openpyxl (inline.xlsx, long.xlsx, rows.xlsx), XlsxWriter
(shared.xlsx: shared strings, a formula's cached value), pycairo's PDF
surface (three pages, the second without text), and hostile files: a zip
bomb (1 GiB of XML in 1 MB), a PDF whose objects are one endless chain of
references, a package cut short. (The slide deck is pptxgenjs's:
make_pptx.cjs.)  Usage: office.py DIR"""
import sys, zipfile

import cairo
import docx
import openpyxl
import xlsxwriter

d = sys.argv[1]

doc = docx.Document()
doc.add_heading("Quarterly report", 1)
doc.add_paragraph('Revenue rose, said "the team" – ünïcode too.')
t = doc.add_table(rows=2, cols=2)
t.cell(0, 0).text, t.cell(0, 1).text = "region", "total"
t.cell(1, 0).text, t.cell(1, 1).text = "north", "two\nlines"
doc.add_paragraph("After the table.")
doc.save(f"{d}/report.docx")

wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Data"
ws["A1"], ws["B1"], ws["A2"], ws["B2"], ws["D3"] = "name", "n", "x", 42, True
wb.create_sheet("Second")["A1"] = "hello"
wb.save(f"{d}/inline.xlsx")

wb = openpyxl.Workbook()
ws = wb.active
for i in range(1, 1501):
    ws.cell(row=i, column=1, value=f"row {i}")
wb.save(f"{d}/long.xlsx")

# rows.xlsx: openpyxl's, its rows' numbers then made ones no sheet can have
# (2^64 - 1, -1, 0, past Excel's 1048576, not a number)
wb = openpyxl.Workbook()
for i in range(1, 7):
    wb.active.cell(row=i, column=1, value=f"r{i}")
wb.save(f"{d}/rows.xlsx")
with zipfile.ZipFile(f"{d}/rows.xlsx") as z:
    parts = {i: z.read(i) for i in z.namelist()}
sheet = parts["xl/worksheets/sheet1.xml"]
for i, bad in enumerate(["18446744073709551615", "-1", "0", "1048577", "1x"], start=2):
    assert f'<row r="{i}"'.encode() in sheet
    sheet = sheet.replace(f'<row r="{i}"'.encode(), f'<row r="{bad}"'.encode())
parts["xl/worksheets/sheet1.xml"] = sheet
with zipfile.ZipFile(f"{d}/rows.xlsx", "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in parts.items():
        z.writestr(name, data)

wb = xlsxwriter.Workbook(f"{d}/shared.xlsx")
ws = wb.add_worksheet("Shared")
ws.write("A1", "alpha"), ws.write("B1", "beta"), ws.write("A2", "alpha"), ws.write_number("C2", 3.5)
ws.write_boolean("A3", False), ws.write_formula("B3", "=C2*2", None, 7)
wb.close()

s = cairo.PDFSurface(f"{d}/paper.pdf", 300, 200)
c = cairo.Context(s)
c.set_font_size(14)
c.move_to(20, 50), c.show_text("Page one text"), c.show_page()
c.rectangle(20, 20, 100, 100), c.fill(), c.show_page()
c.move_to(20, 50), c.show_text("Third page, ünïcode"), c.show_page()
s.finish()

rels = ('<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"'
        ' Target="word/document.xml"/></Relationships>')
with zipfile.ZipFile(f"{d}/bomb.docx", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("_rels/.rels", rels)
    with z.open("word/document.xml", "w", force_zip64=True) as f:
        f.write(b'<w:document xmlns:w="x"><w:body>')
        chunk = b" " * (1 << 20)
        for _ in range(1024):
            f.write(chunk)
        f.write(b"</w:body></w:document>")

with open(f"{d}/report.docx", "rb") as f:
    whole = f.read()
with open(f"{d}/cut.docx", "wb") as f:
    f.write(whole[: len(whole) // 2])

# every object a reference to the next, the last back to the first; the
# catalogue's pages are the chain
n = 200000
out, offs = [b"%PDF-1.4\n"], []
pos = len(out[0])
for i in range(1, n + 1):
    o = b"%d 0 obj\n%d 0 R\nendobj\n" % (i, i + 1 if i < n else 1)
    offs.append(pos), out.append(o)
    pos += len(o)
cat = b"%d 0 obj\n<< /Type /Catalog /Pages 1 0 R >>\nendobj\n" % (n + 1)
offs.append(pos), out.append(cat)
pos += len(cat)
out.append(b"xref\n0 %d\n0000000000 65535 f \n" % (n + 2))
out += [b"%010d 00000 n \n" % o for o in offs]
out.append(b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (n + 2, n + 1, pos))
with open(f"{d}/chain.pdf", "wb") as f:
    f.write(b"".join(out))
