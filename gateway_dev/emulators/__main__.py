from gateway_dev.emulators.server import main

raise SystemExit(main())
