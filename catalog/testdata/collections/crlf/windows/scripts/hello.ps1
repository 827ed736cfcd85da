Write-Output "hello"
