from gateway.emulators.server import main

raise SystemExit(main())
