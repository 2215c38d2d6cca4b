#!/usr/bin/env bash
# Office files written by LibreOffice (headless, Debian's *-nogui packages)
# for spec/office_spec.lua: a text document with a heading and a table, a
# two-slide deck with speaker notes, and a workbook from CSV, each converted
# from a flat ODF or CSV source written here. LibreOffice takes seconds to
# start, so the files are kept under CACHE/<hash of this script> and made
# once (in a temporary directory, then renamed: two runs at once both
# succeed). Prints the directory.   Usage: libreoffice.sh CACHE
set -euo pipefail
cache=$1
mkdir -p "$cache"
dir=$cache/$(sha256sum "$0" | cut -c1-16)
if [ -f "$dir/done" ]; then echo "$dir"; exit 0; fi
command -v soffice >/dev/null || { echo "soffice is missing (scripts/deps.sh installs libreoffice-*-nogui)" >&2; exit 1; }
tmp=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/notes.fodt" <<'ODT'
<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
 <office:body><office:text>
  <text:h text:outline-level="1">Design notes</text:h>
  <text:p>LibreOffice wrote this, ünïcode included.</text:p>
  <table:table table:name="T"><table:table-column table:number-columns-repeated="2"/>
   <table:table-row><table:table-cell><text:p>key</text:p></table:table-cell><table:table-cell><text:p>value</text:p></table:table-cell></table:table-row>
   <table:table-row><table:table-cell><text:p>a</text:p></table:table-cell><table:table-cell><text:p>1</text:p></table:table-cell></table:table-row>
  </table:table>
  <text:p>The end.</text:p>
 </office:text></office:body></office:document>
ODT
cat > "$tmp/talk.fodp" <<'ODP'
<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
 <office:body><office:presentation>
  <draw:page draw:name="p1">
   <draw:frame svg:x="1cm" svg:y="1cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>Launch plan</text:p></draw:text-box></draw:frame>
   <draw:frame svg:x="1cm" svg:y="5cm" svg:width="20cm" svg:height="10cm"><draw:text-box><text:p>Ship it</text:p><text:p>Then rest</text:p></draw:text-box></draw:frame>
   <presentation:notes><draw:frame svg:x="1cm" svg:y="15cm" svg:width="18cm" svg:height="8cm"><draw:text-box><text:p>Speak slowly.</text:p></draw:text-box></draw:frame></presentation:notes>
  </draw:page>
  <draw:page draw:name="p2">
   <draw:frame svg:x="1cm" svg:y="1cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>Questions</text:p></draw:text-box></draw:frame>
  </draw:page>
 </office:presentation></office:body></office:document>
ODP
printf 'name,count\nalpha,3\nbeta,4.5\n' > "$tmp/counts.csv"
profile="file://$tmp/profile" # LibreOffice's own settings: never the user's
for job in "docx notes.fodt" "pptx talk.fodp" "xlsx counts.csv"; do
  set -- $job
  (cd "$tmp" && HOME="$tmp" soffice "-env:UserInstallation=$profile" --headless --convert-to "$1" "$2" >/dev/null 2>&1)
  [ -f "$tmp/${2%.*}.$1" ] || { echo "LibreOffice did not convert $2 to $1" >&2; exit 1; }
done
rm -rf "$tmp/profile"
touch "$tmp/done"
mv -T "$tmp" "$dir" 2>/dev/null || true # another run made it first: theirs is the same
echo "$dir"
